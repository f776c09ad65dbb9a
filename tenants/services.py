"""Writes of tenant administration: tenants, settings, members, API keys, retention policies.

Every change records a TenantEvent with its actor and the values before and after.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone

from tenants.actors import Actor
from tenants.errors import InvalidInput, NotFound
from tenants.models import (
    DEFAULT_TENANT_SETTINGS,
    ApiKey,
    Membership,
    RetentionPolicy,
    Role,
    Tenant,
    TenantEvent,
)
from tenants.scope import all_tenants_scope, tenant_scope

SLUG_RE = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")
API_KEY_SCOPES = ("read", "write")
KEY_PREFIX = "mnm"
_LAST_USED_EVERY = timedelta(seconds=60)

# Bounds of each tenant setting: (minimum, maximum, integer?)
_SETTING_BOUNDS: dict[str, tuple[float, float, bool]] = {
    "weight_fts": (0.0, 100.0, False),
    "weight_vec": (0.0, 100.0, False),
    "weight_entity": (0.0, 100.0, False),
    "default_trust": (0.0, 1.0, False),
    "min_trust": (0.0, 1.0, False),
    "half_life_days": (0.0, 36500.0, False),  # 0: no temporal decay
    "token_budget": (100, 32000, True),
    "prefetch_ttl_s": (0, 86400, True),
}


def _event(tenant: Tenant, action: str, actor: Actor, target: str = "", **values: Any) -> None:
    TenantEvent.objects.create(
        tenant=tenant,
        action=action,
        actor=str(actor),
        target=target,
        before=values.get("before"),
        after=values.get("after"),
    )


# -- tenants ----------------------------------------------------------------------------------


def _validated_settings(changes: dict[str, Any]) -> dict[str, float | int]:
    if not isinstance(changes, dict):
        raise InvalidInput("settings", "must be an object of setting: value")
    clean: dict[str, float | int] = {}
    for key, value in changes.items():
        if key not in _SETTING_BOUNDS:
            known = ", ".join(sorted(_SETTING_BOUNDS))
            raise InvalidInput(f"settings.{key}", f"unknown setting (known: {known})")
        low, high, integer = _SETTING_BOUNDS[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InvalidInput(f"settings.{key}", "must be a number")
        if integer and value != int(value):
            raise InvalidInput(f"settings.{key}", "must be a whole number")
        if not low <= value <= high:
            raise InvalidInput(f"settings.{key}", f"must be between {low:g} and {high:g}")
        clean[key] = int(value) if integer else float(value)
    return clean


def _check_weights(effective: dict[str, float | int]) -> None:
    if effective["weight_fts"] + effective["weight_vec"] + effective["weight_entity"] <= 0:
        raise InvalidInput("settings", "at least one of the fusion weights must be above 0")


@transaction.atomic
def tenant_create(
    *, slug: str, name: str, actor: Actor, settings: dict[str, Any] | None = None
) -> Tenant:
    slug = (slug or "").strip().lower()
    if not SLUG_RE.match(slug):
        raise InvalidInput("slug", "use 1-63 lowercase letters, digits and inner hyphens")
    name = (name or "").strip()
    if not name or len(name) > 200:
        raise InvalidInput("name", "must be 1-200 characters")
    clean = _validated_settings(settings or {})
    _check_weights({**DEFAULT_TENANT_SETTINGS, **clean})
    try:
        with transaction.atomic():
            tenant = Tenant.objects.create(slug=slug, name=name, settings=clean)
    except IntegrityError:
        raise InvalidInput("slug", f"a tenant named {slug!r} exists already") from None
    with tenant_scope(tenant):
        RetentionPolicy.objects.create(tenant=tenant)
        _event(tenant, "tenant_create", actor, slug, after={"name": name, "settings": clean})
    return tenant


@transaction.atomic
def tenant_update_settings(*, tenant: Tenant, changes: dict[str, Any], actor: Actor) -> Tenant:
    clean = _validated_settings(changes)
    with transaction.atomic():
        locked = Tenant.objects.select_for_update().get(pk=tenant.pk)
        before = locked.effective_settings
        _check_weights({**before, **clean})
        locked.settings = {**locked.settings, **clean}
        locked.save(update_fields=["settings"])
        with tenant_scope(locked):
            _event(locked, "settings_update", actor, before=before, after=locked.effective_settings)
    tenant.settings = locked.settings
    return locked


# -- members ----------------------------------------------------------------------------------


def membership_set(
    *, tenant: Tenant, user: AbstractBaseUser, role: str, actor: Actor
) -> Membership:
    if role not in Role.values:
        raise InvalidInput("role", f"must be one of {', '.join(Role.values)}")
    with tenant_scope(tenant):
        existing = Membership.objects.for_tenant(tenant).filter(user=user).first()
        if existing is not None and existing.role == role:
            return existing
        before = {"role": existing.role} if existing else None
        membership, _ = Membership.objects.for_tenant(tenant).update_or_create(
            user=user, defaults={"role": role, "tenant": tenant}
        )
        _event(
            tenant, "member_set", actor, user.get_username(), before=before, after={"role": role}
        )
        return membership


def membership_remove(*, tenant: Tenant, user: AbstractBaseUser, actor: Actor) -> None:
    with tenant_scope(tenant):
        membership = Membership.objects.for_tenant(tenant).filter(user=user).first()
        if membership is None:
            raise NotFound("membership", user.get_username())
        membership.delete()
        _event(
            tenant, "member_remove", actor, user.get_username(), before={"role": membership.role}
        )


# -- API keys ---------------------------------------------------------------------------------


def _hash_secret(token: str) -> str:
    # The token carries 256 random bits, so a fast hash is enough (there is nothing to guess).
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class CreatedApiKey:
    key: ApiKey
    token: str  # shown once; only its hash is kept


def apikey_create(
    *, tenant: Tenant, name: str, actor: Actor, scopes: list[str] | None = None
) -> CreatedApiKey:
    name = (name or "").strip()
    if not name or len(name) > 100:
        raise InvalidInput("name", "must be 1-100 characters")
    scopes = list(dict.fromkeys(scopes if scopes is not None else API_KEY_SCOPES))
    if not scopes or any(s not in API_KEY_SCOPES for s in scopes):
        raise InvalidInput("scopes", f"choose from {', '.join(API_KEY_SCOPES)}")
    prefix = secrets.token_hex(6)
    token = f"{KEY_PREFIX}_{prefix}_{secrets.token_urlsafe(32)}"
    with tenant_scope(tenant):
        key = ApiKey.objects.create(
            tenant=tenant,
            name=name,
            prefix=prefix,
            secret_hash=_hash_secret(token),
            scopes=scopes,
            created_by=str(actor),
        )
        _event(tenant, "apikey_create", actor, f"{name} ({prefix})", after={"scopes": scopes})
    return CreatedApiKey(key=key, token=token)


_DUMMY_HASH = _hash_secret("no such key")


def apikey_verify(*, token: str) -> ApiKey | None:
    """The active key this token belongs to, or None. Takes the same time for every miss."""
    parts = (token or "").strip().split("_", 2)
    prefix = parts[1] if len(parts) == 3 and parts[0] == KEY_PREFIX else ""
    # The key's tenant is what we are looking for, so this one lookup runs across tenants.
    with all_tenants_scope("API key verification"):
        key = ApiKey.objects.all_tenants().select_related("tenant").filter(prefix=prefix).first()
    expected = key.secret_hash if key is not None else _DUMMY_HASH
    matches = hmac.compare_digest(expected, _hash_secret(token or ""))
    if key is None or not matches or key.revoked_at is not None:
        return None
    now = timezone.now()
    if key.last_used_at is None or now - key.last_used_at > _LAST_USED_EVERY:
        with tenant_scope(key.tenant):
            ApiKey.objects.for_tenant(key.tenant).filter(pk=key.pk).update(last_used_at=now)
        key.last_used_at = now
    return key


def apikey_revoke(*, tenant: Tenant, key_id: int, actor: Actor) -> ApiKey:
    with tenant_scope(tenant):
        key = ApiKey.objects.for_tenant(tenant).filter(pk=key_id).first()
        if key is None:
            raise NotFound("API key", key_id)
        if key.revoked_at is None:
            key.revoked_at = timezone.now()
            key.save(update_fields=["revoked_at"])
            _event(tenant, "apikey_revoke", actor, f"{key.name} ({key.prefix})")
        return key


# -- retention --------------------------------------------------------------------------------

# Each retention limit's range and whether it is a whole number: the API and the pages take
# theirs from here.
RETENTION_LIMITS: dict[str, tuple[float, float, bool]] = {
    "archive_after_days_unretrieved": (1, 36500, True),
    "archive_below_trust": (0.0, 1.0, False),
    "max_active_facts": (1, 1_000_000_000, True),
    "purge_archived_after_days": (1, 36500, True),
}


def retention_range(field: str) -> dict[str, float]:
    """min_value / max_value of a retention limit, for the API's and the pages' fields."""
    low, high, _ = RETENTION_LIMITS[field]
    return {"min_value": low, "max_value": high}


def retention_changes_validate(changes: Any) -> dict[str, Any]:
    """The checked changes to a retention policy (shared by the update and its preview)."""
    if not isinstance(changes, dict) or not changes:
        raise InvalidInput("retention", "name at least one field to change")
    for field, value in changes.items():
        if field == "legal_hold":
            if not isinstance(value, bool):
                raise InvalidInput(field, "must be true or false")
            continue
        if field not in RETENTION_LIMITS:
            raise InvalidInput(field, "unknown retention field")
        if value is None:
            continue
        low, high, integer = RETENTION_LIMITS[field]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InvalidInput(field, "must be a number or null")
        if (integer and value != int(value)) or not low <= value <= high:
            kind = "a whole number" if integer else "a number"
            raise InvalidInput(field, f"must be {kind} between {low:g} and {high:g}, or null")
    return changes


def retention_policy_update(
    *, tenant: Tenant, actor: Actor, changes: dict[str, Any]
) -> RetentionPolicy:
    """Change some limits (None clears one) and/or `legal_hold`."""
    changes = retention_changes_validate(changes)
    with tenant_scope(tenant):
        policy, _ = (
            RetentionPolicy.objects.for_tenant(tenant)
            .select_for_update()
            .get_or_create(tenant=tenant)
        )
        before = {field: getattr(policy, field) for field in changes}
        for field, value in changes.items():
            setattr(policy, field, value)
        policy.save()
        _event(tenant, "retention_update", actor, before=before, after=dict(changes))
        return policy


# -- audit ------------------------------------------------------------------------------------


def audit_export_record(
    *, tenant: Tenant, actor: Actor, format: str, filters: dict[str, Any]
) -> None:
    """Exporting the audit log is itself audited: who took a copy, of what, in which format."""
    with tenant_scope(tenant):
        _event(tenant, "audit_export", actor, format, after={"filters": filters})
