"""Who may do what in a tenant: one model for the REST API and the pages.

A person's rights follow their role (`tenants.models.Role`); an API key's follow its scopes.
Both surfaces ask `Access.may(need)`; only the way they answer a refusal differs (a 403 body,
a page's 403).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser

from observability.context import log_tenant_set
from tenants.actors import Actor
from tenants.errors import NotFound
from tenants.models import ApiKey, Role, Tenant
from tenants.selectors import membership_role, tenant_get


class Need(enum.Enum):
    READ = "read"
    WRITE = "write"
    MANAGE = "manage"  # tenant administration: a signed-in admin, never an API key
    PEOPLE = "people"  # who the members are and which keys exist: people only, never a key
    WHOLE_TENANT = "whole_tenant"  # tenant-wide reads: not for a key limited to a scope


ROLE_RIGHTS: dict[str, frozenset[str]] = {
    Role.ADMIN: frozenset({"read", "write", "manage", "people", "whole_tenant"}),
    Role.AUDITOR: frozenset({"read", "people", "whole_tenant"}),
}


@dataclass(frozen=True)
class Access:
    """The tenant a request runs for, who asks, and what they may do there."""

    tenant: Tenant
    actor: Actor
    rights: frozenset[str]
    role: str | None  # a person's role; None for an API key
    key: ApiKey | None = None

    @property
    def is_key(self) -> bool:
        return self.key is not None

    def may(self, need: Need) -> bool:
        return need.value in self.rights

    @property
    def can_write(self) -> bool:
        """For the pages' templates: whether write actions are shown."""
        return self.may(Need.WRITE)


def key_access(key: ApiKey) -> Access:
    rights = {scope for scope in key.scopes if scope in ("read", "write")}
    if not key.scope_prefix:
        rights.add("whole_tenant")
    return Access(key.tenant, Actor.api_key(key), frozenset(rights), None, key)


def person_access(*, user: AbstractBaseUser, slug: str) -> Access:
    """The person's access to the tenant named `slug`; NotFound when it is not theirs, the
    same answer as for a tenant that does not exist."""
    tenant = tenant_get(slug=slug)
    role = membership_role(tenant=tenant, user=user)
    if role is None:
        raise NotFound("tenant", slug)
    log_tenant_set(tenant.slug)  # on the request's log lines from here on
    return Access(tenant, Actor.user(user), ROLE_RIGHTS[role], role)
