"""Raw input about tenants (a new tenant, its settings, its retention policy), parsed once into
frozen typed values; a bad value raises InvalidInput naming its field. The REST API, the pages
and the command line parse here; the services take only the values."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal, TypedDict, overload

from agentspec.limits import MAX_SCOPE_CHARS as MAX_SCOPE_CHARS
from tenants.errors import InvalidInput
from tenants.models import Role
from tenants.scope import current_scope_limit, scope_path, scope_within
from tenants.validation import check_choice

SLUG_RE = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")
MAX_NAME_CHARS = 200

# Bounds of each tenant setting: (minimum, maximum, integer?)
SETTING_BOUNDS: dict[str, tuple[float, float, bool]] = {
    "weight_fts": (0.0, 100.0, False),
    "weight_vec": (0.0, 100.0, False),
    "weight_entity": (0.0, 100.0, False),
    "default_trust": (0.0, 1.0, False),
    "min_trust": (0.0, 1.0, False),
    "half_life_days": (0.0, 36500.0, False),  # 0: no temporal decay
    "token_budget": (100, 32000, True),
    "prefetch_ttl_s": (0, 86400, True),
    "duplicate_threshold": (0.5, 1.0, False),
    "conflict_auto_supersede": (0, 1, True),
}

# Each retention limit's range and whether it is a whole number: the API and the pages take
# theirs from here.
RETENTION_LIMITS: dict[str, tuple[float, float, bool]] = {
    "archive_after_days_unretrieved": (1, 36500, True),
    "archive_below_trust": (0.0, 1.0, False),
    "max_active_facts": (1, 1_000_000_000, True),
    "purge_archived_after_days": (1, 36500, True),
    "run_every_hours": (1, 720, True),
    "importance_every_hours": (1, 720, True),
}
# The schedules: always set (a whole number of hours), never null.
SCHEDULES = ("run_every_hours", "importance_every_hours")


class WholeRange(TypedDict):
    min_value: int
    max_value: int


class FractionRange(TypedDict):
    min_value: float
    max_value: float


@overload
def retention_range(
    name: Literal[
        "archive_after_days_unretrieved",
        "max_active_facts",
        "purge_archived_after_days",
        "run_every_hours",
        "importance_every_hours",
    ],
) -> WholeRange: ...
@overload
def retention_range(name: Literal["archive_below_trust"]) -> FractionRange: ...
def retention_range(name: str) -> WholeRange | FractionRange:
    """min_value / max_value of a retention limit, for the API's and the pages' fields."""
    low, high, integer = RETENTION_LIMITS[name]
    if integer:
        return {"min_value": int(low), "max_value": int(high)}
    return {"min_value": low, "max_value": high}


# -- settings -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SettingsChanges:
    """Tenant settings to set, each range-checked (the others keep their values)."""

    values: Mapping[str, float | int] = field(default_factory=dict)


def settings_changes(raw: Any) -> SettingsChanges:
    if not isinstance(raw, dict):
        raise InvalidInput("settings", "must be an object of setting: value")
    clean: dict[str, float | int] = {}
    for key, value in raw.items():
        if key not in SETTING_BOUNDS:
            known = ", ".join(sorted(SETTING_BOUNDS))
            raise InvalidInput(f"settings.{key}", f"unknown setting (known: {known})")
        low, high, integer = SETTING_BOUNDS[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InvalidInput(f"settings.{key}", "must be a number")
        if integer and value != int(value):
            raise InvalidInput(f"settings.{key}", "must be a whole number")
        if not low <= value <= high:
            raise InvalidInput(f"settings.{key}", f"must be between {low:g} and {high:g}")
        clean[key] = int(value) if integer else float(value)
    return SettingsChanges(values=clean)


# -- a new tenant ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class TenantDraft:
    slug: str
    name: str
    settings: SettingsChanges = field(default_factory=SettingsChanges)


def tenant_draft(raw: Mapping[str, Any]) -> TenantDraft:
    """A new tenant from raw `slug`, `name` and optional `settings`."""
    slug = raw.get("slug")
    slug = slug.strip().lower() if isinstance(slug, str) else ""
    if not SLUG_RE.match(slug):
        raise InvalidInput("slug", "use 1-63 lowercase letters, digits and inner hyphens")
    name = tenant_name(raw.get("name"))
    return TenantDraft(slug=slug, name=name, settings=settings_changes(raw.get("settings") or {}))


def tenant_name(value: Any) -> str:
    """A tenant's display name: 1 to MAX_NAME_CHARS characters once trimmed."""
    name = value.strip() if isinstance(value, str) else ""
    if not name or len(name) > MAX_NAME_CHARS:
        raise InvalidInput("name", "must be 1-200 characters")
    return name


# -- members, invitations and API keys -------------------------------------------------------------

API_KEY_SCOPES = ("read", "write")
MAX_KEY_NAME_CHARS = 100
MAX_EMAIL_CHARS = 254
ROTATION_GRACE_MAX = timedelta(days=30)


def member_role(value: Any) -> str:
    """A member's role (admin or auditor); absent is not a role."""
    if value is None:
        raise InvalidInput("role", f"must be one of {', '.join(Role.values)}")
    return str(check_choice("role", value, Role.values))


def invite_email(value: Any) -> str:
    """The address an invitation is meant for, or "" for none."""
    email = value.strip() if isinstance(value, str) else ""
    if value not in (None, "") and not isinstance(value, str):
        raise InvalidInput("email", "is not an e-mail address")
    if len(email) > MAX_EMAIL_CHARS or (email and "@" not in email):
        raise InvalidInput("email", "is not an e-mail address")
    return email


def key_name(value: Any) -> str:
    """An API key's name: 1 to MAX_KEY_NAME_CHARS characters once trimmed."""
    name = value.strip() if isinstance(value, str) else ""
    if not name or len(name) > MAX_KEY_NAME_CHARS:
        raise InvalidInput("name", "must be 1-100 characters")
    return name


def key_scopes(value: Any) -> tuple[str, ...]:
    """What a key may do (None: everything), each once, in the order given."""
    scopes = list(API_KEY_SCOPES) if value is None else value
    if (
        not isinstance(scopes, list | tuple)
        or not scopes
        or any(s not in API_KEY_SCOPES for s in scopes)
    ):
        raise InvalidInput("scopes", f"choose from {', '.join(API_KEY_SCOPES)}")
    return tuple(dict.fromkeys(scopes))


def rotation_grace(value: timedelta) -> timedelta:
    """How long a rotated key's old secret keeps working: 0 to 30 days."""
    if value < timedelta(0) or value > ROTATION_GRACE_MAX:
        raise InvalidInput("grace_hours", "must be between 0 and 720 hours")
    return value


# -- retention ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RetentionChanges:
    """Changes to a retention policy: a limit set to None is cleared; `legal_hold` a flag."""

    values: Mapping[str, float | int | bool | None]


def retention_changes(raw: Any) -> RetentionChanges:
    """The checked changes to a retention policy (shared by the update and its preview)."""
    if not isinstance(raw, dict) or not raw:
        raise InvalidInput("retention", "name at least one field to change")
    for name, value in raw.items():
        if name == "legal_hold":
            if not isinstance(value, bool):
                raise InvalidInput(name, "must be true or false")
            continue
        if name not in RETENTION_LIMITS:
            raise InvalidInput(name, "unknown retention field")
        if value is None and name in SCHEDULES:
            raise InvalidInput(name, "must be a whole number of hours from 1 to 720")
        if value is None:
            continue
        low, high, integer = RETENTION_LIMITS[name]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InvalidInput(name, "must be a number or null")
        if (integer and value != int(value)) or not low <= value <= high:
            if integer:
                raise InvalidInput(
                    name, f"must be a whole number between {low:g} and {high:g}, or null"
                )
            raise InvalidInput(name, f"must be a number between {low:g} and {high:g}, or null")
    return RetentionChanges(values=dict(raw))


def retention_changes_validate(changes: Any) -> dict[str, Any]:
    """`retention_changes` as a plain dict (for the policy preview)."""
    return dict(retention_changes(changes).values)


# -- scopes: the paths facts, keys and queries are filed under ----------------------------

_SCOPE_SEGMENT = re.compile(r"^[a-z][a-z0-9_-]{0,31}:[^\s/:]{1,100}$")


def clean_scope(scope: Any) -> str:
    """A scope path, checked; under a key's scope limit, "" means the limit itself and a scope
    outside it is refused."""
    limit = current_scope_limit()
    path = scope_checked(scope)
    if limit and not path:
        return limit
    if not scope_within(path, limit):
        raise scope_outside(limit)
    return path


def scope_outside(limit: str) -> InvalidInput:
    """The one refusal of a scope outside a key's scope limit, on every surface."""
    return InvalidInput("scope", f"is outside this API key's scope {limit!r}")


def scope_checked(scope: Any) -> str:
    """A scope path in its one written form (NFC, no outer slashes); "" for none."""
    if scope is None:
        return ""
    if not isinstance(scope, str):
        raise InvalidInput("scope", "must be text like user:alice/project:beta")
    path = scope_path(scope)
    if not path:
        return ""
    if len(path) > MAX_SCOPE_CHARS:
        raise InvalidInput("scope", f"is longer than {MAX_SCOPE_CHARS} characters")
    for segment in path.split("/"):
        if not _SCOPE_SEGMENT.match(segment):
            raise InvalidInput(
                "scope",
                f"segment {segment!r} is not type:name (e.g. user:alice/project:beta; the type "
                "is lowercase letters, digits, _ or -; the name has no spaces, '/' or ':')",
            )
    return path
