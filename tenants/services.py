"""Writes of tenant administration: tenants, settings, members, API keys, retention policies.

Every change records a TenantEvent with its actor and the values before and after.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, User
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from observability.context import log_tenant_set
from tenants import cross_tenant
from tenants.actors import Actor
from tenants.errors import InvalidInput, NotFound
from tenants.inputs import (
    RetentionChanges,
    SettingsChanges,
    TenantDraft,
    key_name,
    key_scopes,
    member_role,
    rotation_grace,
    tenant_name,
)
from tenants.models import (
    DEFAULT_TENANT_SETTINGS,
    ApiKey,
    Membership,
    RetentionPolicy,
    Role,
    Tenant,
    TenantDeletion,
    TenantEvent,
)
from tenants.scope import scope_limit_set, tenant_scope

KEY_PREFIX = "mnm"
_LAST_USED_EVERY = timedelta(seconds=60)


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


def _check_weights(effective: dict[str, float | int]) -> None:
    if effective["weight_fts"] + effective["weight_vec"] + effective["weight_entity"] <= 0:
        raise InvalidInput("settings", "at least one of the fusion weights must be above 0")


@transaction.atomic
def tenant_create(*, draft: TenantDraft, actor: Actor) -> Tenant:
    slug, name, clean = draft.slug, draft.name, dict(draft.settings.values)
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
def tenant_update_settings(*, tenant: Tenant, changes: SettingsChanges, actor: Actor) -> Tenant:
    clean = dict(changes.values)
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


def _refuse_last_admin(tenant: Tenant, membership: Membership | None, *, removing: bool) -> None:
    """A tenant keeps at least one admin: its last one can be neither removed nor demoted."""
    if membership is None or membership.role != Role.ADMIN:
        return
    # Lock the tenant's admins, so that two admins removing each other at once cannot both win.
    admins = list(Membership.objects.for_tenant(tenant).select_for_update().filter(role=Role.ADMIN))
    if len(admins) <= 1:
        who = membership.user.get_username()
        if removing:
            raise InvalidInput(
                "username",
                f"{who} is the last admin of {tenant.slug} and cannot be removed: "
                "make another member an admin first",
            )
        raise InvalidInput(
            "username",
            f"{who} is the last admin of {tenant.slug} and cannot be made an auditor: "
            "make another member an admin first",
        )


@transaction.atomic
def membership_set(
    *, tenant: Tenant, user: AbstractBaseUser, role: str, actor: Actor
) -> Membership:
    role = member_role(role)
    with tenant_scope(tenant):
        existing: Membership | None = (
            Membership.objects.for_tenant(tenant).filter(user_id=user.pk).first()
        )
        if existing is not None and existing.role == role:
            return existing
        if existing is not None and role != Role.ADMIN:
            _refuse_last_admin(tenant, existing, removing=False)
        before = {"role": existing.role} if existing else None
        membership: Membership
        membership, _ = Membership.objects.for_tenant(tenant).update_or_create(
            user_id=user.pk, defaults={"role": role, "tenant": tenant}
        )
        _event(
            tenant, "member_set", actor, user.get_username(), before=before, after={"role": role}
        )
        return membership


@transaction.atomic
def membership_remove(*, tenant: Tenant, user: AbstractBaseUser, actor: Actor) -> None:
    with tenant_scope(tenant):
        membership = Membership.objects.for_tenant(tenant).filter(user_id=user.pk).first()
        if membership is None:
            raise NotFound("membership", user.get_username())
        _refuse_last_admin(tenant, membership, removing=True)
        # Recorded first: an admin who removes themselves is still a member when it is written
        # (the database refuses an audit actor who does not belong to the tenant).
        _event(
            tenant, "member_remove", actor, user.get_username(), before={"role": membership.role}
        )
        membership.delete()


def password_reset_link_allowed(*, tenant: Tenant, user: User) -> bool:
    """A tenant admin may reset the password of a member who belongs to this tenant alone and
    is not staff: anyone else's account reaches further than this tenant (a superuser does it)."""
    if user.is_staff or user.is_superuser:
        return False
    others = set(cross_tenant.user_tenants(user_id=user.pk)) - {tenant.pk}
    return not others


def password_reset_token_make(
    *, tenant: Tenant | None, user: User, actor: Actor
) -> tuple[str, str]:
    """(uid, token) of a one-time password-reset link for `user` (Django's reset tokens: used
    up once the password changes, valid PASSWORD_RESET_TIMEOUT). Audited in the tenant."""
    from django.contrib.auth.tokens import default_token_generator
    from django.utils.encoding import force_bytes
    from django.utils.http import urlsafe_base64_encode

    if tenant is not None:
        if not password_reset_link_allowed(tenant=tenant, user=user):
            raise InvalidInput(
                "username",
                "this person belongs to other tenants too (or is staff): a superuser resets "
                "their password",
            )
        with tenant_scope(tenant):
            _event(tenant, "password_reset_link", actor, user.get_username())
    return urlsafe_base64_encode(force_bytes(user.pk)), default_token_generator.make_token(user)


def under_legal_hold(tenant: Tenant) -> bool:
    """Whether the tenant's retention policy holds it. The policy row stays share-locked to the
    end of the caller's transaction: a hold being set waits for the caller, and the caller does
    not pass a hold set a moment before."""
    with tenant_scope(tenant), connection.cursor() as cursor:
        cursor.execute(
            "SELECT legal_hold FROM tenants_retentionpolicy WHERE tenant_id = %s FOR SHARE",
            [tenant.pk],
        )
        row = cursor.fetchone()
    return bool(row and row[0])


@transaction.atomic
def tenant_delete(*, tenant: Tenant, actor: Actor, confirm: str) -> TenantDeletion:
    """Delete a tenant and everything it holds, for good (superusers). `confirm` must be the
    tenant's slug, typed. What remains is a TenantDeletion record: who, when, how much. Refused
    while the tenant is under legal hold."""
    if (confirm or "").strip() != tenant.slug:
        raise InvalidInput("confirm", f"type the tenant's short name, {tenant.slug}, to delete it")
    if under_legal_hold(tenant):
        raise InvalidInput(
            "legal_hold", "the tenant is under legal hold: lift the hold before deleting it"
        )
    locked = Tenant.objects.select_for_update().get(pk=tenant.pk)
    # The database deletes every row, audit trail included (which the runtime role may not),
    # counts them and writes the record; it refuses a held tenant itself too.
    record_id = cross_tenant.tenant_rows_delete(tenant_id=locked.pk, actor=str(actor))
    _archives_remove(locked.pk)
    return TenantDeletion.objects.get(pk=record_id)


def _archives_remove(tenant_pk: int) -> None:
    """The tenant's archive bundles go with it (once the deletion commits)."""
    import shutil
    from pathlib import Path

    from django.conf import settings

    folder = Path(settings.MNEMOSYNE_ARCHIVE_DIR) / str(tenant_pk)
    transaction.on_commit(lambda: shutil.rmtree(folder, ignore_errors=True))


@transaction.atomic
def tenant_rename(*, tenant: Tenant, name: str, actor: Actor) -> Tenant:
    name = tenant_name(name)
    locked = Tenant.objects.select_for_update().get(pk=tenant.pk)
    before = locked.name
    if before == name:
        return locked
    locked.name = name
    locked.save(update_fields=["name"])
    with tenant_scope(locked):
        _event(locked, "tenant_rename", actor, locked.slug, before={"name": before},
               after={"name": name})  # fmt: skip
    tenant.name = name
    return locked


# -- API keys ---------------------------------------------------------------------------------


def _hash_secret(token: str) -> str:
    # The token carries 256 random bits, so a fast hash is enough (there is nothing to guess).
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class CreatedApiKey:
    key: ApiKey
    token: str  # shown once; only its hash is kept


def _clean_key_scope_prefix(scope_prefix: str | None) -> str:
    if not scope_prefix:
        return ""
    from tenants.inputs import clean_scope

    return clean_scope(scope_prefix)


def _clean_expiry(expires_at: datetime | None) -> datetime | None:
    if expires_at is not None and expires_at <= timezone.now():
        raise InvalidInput("expires_at", "must be in the future")
    return expires_at


def apikey_create(
    *,
    tenant: Tenant,
    name: str,
    actor: Actor,
    scopes: list[str] | None = None,
    expires_at: datetime | None = None,
    scope_prefix: str | None = None,
) -> CreatedApiKey:
    """A new key; `expires_at` ends it (None: never), `scope_prefix` limits it to that scope
    and below (None or "": the whole tenant)."""
    name, scopes = key_name(name), list(key_scopes(scopes))
    expires_at = _clean_expiry(expires_at)
    limit = _clean_key_scope_prefix(scope_prefix)
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
            expires_at=expires_at,
            scope_prefix=limit,
        )
        after: dict[str, Any] = {"scopes": scopes}
        if expires_at:
            after["expires_at"] = expires_at.isoformat()
        if limit:
            after["scope_prefix"] = limit
        _event(tenant, "apikey_create", actor, f"{name} ({prefix})", after=after)
    return CreatedApiKey(key=key, token=token)


_DUMMY_HASH = _hash_secret("no such key")


def apikey_verify(
    *, token: str, address: str | None = None, count_use: bool = False
) -> ApiKey | None:
    """The usable key this token belongs to, or None (unknown, wrong, revoked, expired, or an
    old secret past its grace period). Takes the same time for every miss. `address`: where
    the request came from, kept as the key's last address. `count_use`: count one request in
    the key's usage of today, in the same transaction as the key's read."""
    parts = (token or "").strip().split("_", 2)
    prefix = parts[1] if len(parts) == 3 and parts[0] == KEY_PREFIX else ""
    # The key's tenant is what we are looking for: the one lookup across tenants, which gives
    # what checking the secret needs. The key itself is read in its tenant once it matches.
    found = cross_tenant.apikey_lookup(prefix=prefix)
    given = _hash_secret(token or "")
    expected = found.secret_hash if found is not None else _DUMMY_HASH
    matches = hmac.compare_digest(expected, given)
    now = timezone.now()
    previous = found.previous_secret_hash if found is not None else ""
    if found is not None and previous and hmac.compare_digest(previous, given):
        matches = found.previous_valid_until is not None and now < found.previous_valid_until
    if found is None or not matches:
        return None
    with tenant_scope(found.tenant_id):
        key: ApiKey | None = (
            ApiKey.objects.for_tenant(found.tenant_id)
            .select_related("tenant")
            .filter(pk=found.key_id)
            .first()
        )
        if key is None or not key.is_active:
            return None
        if count_use:
            _usage_count(key)
        _last_use_note(key, now, address)
    return key


def _last_use_note(key: ApiKey, now: datetime, address: str | None) -> None:
    """When and from where the key was last used: written at most every _LAST_USED_EVERY, or
    when the address changes. Caller holds the key's tenant scope."""
    stale = key.last_used_at is None or now - key.last_used_at > _LAST_USED_EVERY
    moved = address is not None and address != key.last_used_from
    if stale or moved:
        changes: dict[str, Any] = {"last_used_at": now}
        if address is not None:
            changes["last_used_from"] = address
        ApiKey.objects.for_tenant(key.tenant).filter(pk=key.pk).update(**changes)
        key.last_used_at = now
        if address is not None:
            key.last_used_from = address


def apikey_authenticate(*, token: str, address: str | None = None) -> ApiKey | None:
    """A request's key: verified (None when it is not usable), its use counted, and, when the
    key is limited to a scope, the rest of the request limited to it (tenants.scope). Every
    surface that takes an API key calls this; surfaces.base.security.ScopeLimitMiddleware lifts
    the limit when the request ends."""
    key = apikey_verify(token=token, address=address, count_use=True)
    if key is None:
        return None
    scope_limit_set(key.scope_prefix)
    log_tenant_set(key.tenant.slug)
    return key


def _usage_count(key: ApiKey) -> None:
    """Count one request made with the key, in today's row (UTC). Caller holds the key's
    tenant scope."""
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO tenants_apikeyusage (tenant_id, key_id, day, requests) "
            "VALUES (%s, %s, (now() AT TIME ZONE 'UTC')::date, 1) "
            "ON CONFLICT (key_id, day) DO UPDATE SET requests = tenants_apikeyusage.requests + 1",
            [key.tenant_id, key.pk],
        )


def apikey_rotate(
    *, tenant: Tenant, key_id: int, actor: Actor, grace: timedelta = timedelta(hours=24)
) -> CreatedApiKey:
    """A new secret for the key; the old one keeps working for `grace` (at most 30 days), so
    that the programs using it can be changed one by one."""
    grace = rotation_grace(grace)
    with tenant_scope(tenant):
        key = ApiKey.objects.for_tenant(tenant).select_for_update().filter(pk=key_id).first()
        if key is None:
            raise NotFound("API key", key_id)
        if not key.is_active:
            raise InvalidInput("key", "a revoked or expired key cannot be rotated")
        now = timezone.now()
        token = f"{KEY_PREFIX}_{key.prefix}_{secrets.token_urlsafe(32)}"
        key.previous_secret_hash = key.secret_hash
        key.previous_valid_until = now + grace
        key.secret_hash = _hash_secret(token)
        key.rotated_at = now
        key.save(
            update_fields=[
                "previous_secret_hash",
                "previous_valid_until",
                "secret_hash",
                "rotated_at",
            ]
        )
        _event(
            tenant,
            "apikey_rotate",
            actor,
            f"{key.name} ({key.prefix})",
            after={"old_secret_valid_until": key.previous_valid_until.isoformat()},
        )
    return CreatedApiKey(key=key, token=token)


def apikey_revoke(*, tenant: Tenant, key_id: int, actor: Actor) -> ApiKey:
    with tenant_scope(tenant):
        key: ApiKey | None = ApiKey.objects.for_tenant(tenant).filter(pk=key_id).first()
        if key is None:
            raise NotFound("API key", key_id)
        if key.revoked_at is None:
            key.revoked_at = timezone.now()
            key.save(update_fields=["revoked_at"])
            _event(tenant, "apikey_revoke", actor, f"{key.name} ({key.prefix})")
        return key


# -- retention --------------------------------------------------------------------------------


def retention_policy_update(
    *, tenant: Tenant, actor: Actor, changes: RetentionChanges
) -> RetentionPolicy:
    """Change some limits (None clears one) and/or `legal_hold`."""
    values = changes.values
    with tenant_scope(tenant):
        policy: RetentionPolicy
        policy, _ = (
            RetentionPolicy.objects.for_tenant(tenant)
            .select_for_update()
            .get_or_create(tenant=tenant)
        )
        before = {field: getattr(policy, field) for field in values}
        for field, value in values.items():
            setattr(policy, field, value)
        policy.save()
        _event(tenant, "retention_update", actor, before=before, after=dict(values))
        return policy


def retention_run_record(
    *, tenant: Tenant, actor: Actor, run_id: int, dry_run: bool, counts: dict[str, int]
) -> None:
    """A retention run someone started by hand, or a dry run, in the audit log."""
    action = "retention_dry_run" if dry_run else "retention_run"
    with tenant_scope(tenant):
        _event(tenant, action, actor, after={"run": run_id, **counts})


# -- audit ------------------------------------------------------------------------------------


def facts_export_record(
    *, tenant: Tenant, actor: Actor, format: str, filters: dict[str, Any]
) -> None:
    """Taking a copy of the facts is audited like the audit log's export."""
    with tenant_scope(tenant):
        _event(tenant, "facts_export", actor, format, after={"filters": filters})


def audit_export_record(
    *, tenant: Tenant, actor: Actor, format: str, filters: dict[str, Any]
) -> None:
    """Exporting the audit log is itself audited: who took a copy, of what, in which format."""
    with tenant_scope(tenant):
        _event(tenant, "audit_export", actor, format, after={"filters": filters})
