"""Reads of tenant administration. Each runs inside the tenant's scope and returns plain values
or evaluated lists, never a lazy queryset that could run later outside the scope."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, User
from django.utils import timezone

from tenants import cross_tenant
from tenants.errors import NotFound
from tenants.models import (
    ApiKey,
    ApiKeyUsage,
    Invitation,
    Membership,
    RetentionPolicy,
    Tenant,
    TenantEvent,
)
from tenants.scope import tenant_scope


def tenant_get(*, slug: str) -> Tenant:
    tenant = Tenant.objects.filter(slug=slug).first()
    if tenant is None:
        raise NotFound("tenant", slug)
    return tenant


def tenant_list() -> list[Tenant]:
    """Every tenant: for superusers and the command line."""
    return list(Tenant.objects.order_by("slug"))


def tenants_for_user(*, user: AbstractBaseUser) -> list[tuple[Tenant, str]]:
    """The tenants a user may open, with their role there (superusers: every tenant, admin)."""
    if getattr(user, "is_superuser", False):
        return [(tenant, "admin") for tenant in Tenant.objects.order_by("slug")]
    # Which tenants is exactly the question: the one lookup across tenants, by user.
    roles = cross_tenant.user_tenants(user_id=user.pk)
    return [
        (tenant, roles[tenant.pk])
        for tenant in Tenant.objects.filter(pk__in=roles).order_by("slug")
    ]


def membership_role(*, tenant: Tenant, user: AbstractBaseUser) -> str | None:
    if getattr(user, "is_superuser", False):
        return "admin"
    with tenant_scope(tenant):
        row = Membership.objects.for_tenant(tenant).filter(user_id=user.pk).first()
    return row.role if row else None


def membership_list(*, tenant: Tenant) -> list[Membership]:
    with tenant_scope(tenant):
        return list(
            Membership.objects.for_tenant(tenant).select_related("user").order_by("user__username")
        )


def superuser_list() -> list[User]:
    """The active superusers: they administer every tenant without a membership."""
    return list(
        get_user_model().objects.filter(is_superuser=True, is_active=True).order_by("username")
    )


def membership_get(*, tenant: Tenant, username: str) -> Membership:
    with tenant_scope(tenant):
        row: Membership | None = (
            Membership.objects.for_tenant(tenant)
            .select_related("user")
            .filter(user__username=username)
            .first()
        )
    if row is None:
        raise NotFound("member", username)
    return row


def user_get(*, username: str) -> User:
    """An active user by name, to make a member of a tenant."""
    user = get_user_model().objects.filter(username=username, is_active=True).first()
    if user is None:
        raise NotFound("user", username)
    return user


def apikey_get(*, tenant: Tenant, key_id: int) -> ApiKey:
    with tenant_scope(tenant):
        key: ApiKey | None = ApiKey.objects.for_tenant(tenant).filter(pk=key_id).first()
    if key is None:
        raise NotFound("API key", key_id)
    return key


def apikey_list(*, tenant: Tenant) -> list[ApiKey]:
    with tenant_scope(tenant):
        return list(ApiKey.objects.for_tenant(tenant).order_by("-created_at", "-id"))


@dataclass(frozen=True)
class KeyUsage:
    today: int
    last_7_days: int
    per_day: list[tuple[date, int]]  # the last 7 days, oldest first, days without use as 0


def apikey_usage(*, tenant: Tenant, days: int = 7) -> dict[int, KeyUsage]:
    """Requests per key and day (UTC) over the last `days` days, by key id."""
    today = timezone.now().astimezone(UTC).date()
    first = today - timedelta(days=days - 1)
    with tenant_scope(tenant):
        rows = list(
            ApiKeyUsage.objects.for_tenant(tenant)
            .filter(day__gte=first)
            .values_list("key_id", "day", "requests")
        )
    counts: dict[int, dict[date, int]] = {}
    for key_id, day, requests in rows:
        counts.setdefault(key_id, {})[day] = requests
    calendar = [first + timedelta(days=n) for n in range(days)]
    return {
        key_id: KeyUsage(
            today=by_day.get(today, 0),
            last_7_days=sum(by_day.values()),
            per_day=[(day, by_day.get(day, 0)) for day in calendar],
        )
        for key_id, by_day in counts.items()
    }


def invitation_list(*, tenant: Tenant) -> list[Invitation]:
    """Invitations neither used, withdrawn nor expired (open, or declined by their account),
    newest first."""
    with tenant_scope(tenant):
        return list(
            Invitation.objects.for_tenant(tenant)
            .filter(used_at__isnull=True, revoked_at__isnull=True, expires_at__gt=timezone.now())
            .order_by("-created_at", "-id")
        )


def retention_policy_get(*, tenant: Tenant) -> RetentionPolicy:
    with tenant_scope(tenant):
        policy = RetentionPolicy.objects.for_tenant(tenant).first()
        return policy if policy is not None else RetentionPolicy(tenant=tenant)


def tenant_event_list(*, tenant: Tenant, limit: int = 100) -> list[TenantEvent]:
    with tenant_scope(tenant):
        return list(TenantEvent.objects.for_tenant(tenant).order_by("-at", "-id")[:limit])
