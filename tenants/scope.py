"""The tenant scope: every read or write of tenant data happens inside one.

Two guards work together:
- the ORM guard: tenant-owned models' default manager refuses to evaluate a query that was not
  narrowed with `for_tenant(tenant)`;
- the database guard: PostgreSQL row-level security on every tenant-owned table admits only rows
  of the tenant named by the transaction-local setting `app.tenant_id`, which `tenant_scope`
  sets. A query that forgot its filter, raw SQL included, sees no foreign row.

There is no way past the database guard for the role the application runs as: the few reads
that span tenants go through database functions (`tenants.cross_tenant`).
"""

from __future__ import annotations

import contextvars
import logging
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from django.db import connection, transaction
from django.db.models import Q

logger = logging.getLogger(__name__)

# The tenant id the current code runs for (None outside any scope).
_current: contextvars.ContextVar[int | None] = contextvars.ContextVar("tenant_scope", default=None)


class TenantRef(Protocol):
    """A saved tenant as the scope sees it: its primary key (`tenants.models.Tenant`; the scope
    sits below the models, which use it)."""

    @property
    def pk(self) -> Any: ...


class TenantScopeError(RuntimeError):
    """Tenant data was touched outside a tenant scope, or two scopes were mixed."""


def _tenant_pk(tenant: TenantRef | int) -> int:
    pk = tenant if isinstance(tenant, int) else tenant.pk
    if not isinstance(pk, int) or pk <= 0:
        raise TenantScopeError(f"not a saved tenant: {tenant!r}")
    return pk


def _set(tenant_id: str) -> str:
    """Set the transaction-local tenant; return the previous value."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT current_setting('app.tenant_id', true), set_config('app.tenant_id', %s, true)",
            [tenant_id],
        )
        previous, _ = cursor.fetchone()
    return previous or ""


@contextmanager
def tenant_scope(tenant: TenantRef | int) -> Iterator[int]:
    """Run the body in a transaction that sees only `tenant`'s rows. Yields the tenant id.

    Re-entering the same tenant joins the open scope; entering another tenant inside a scope
    is an error (a leak waiting to happen).
    """
    tenant_id = _tenant_pk(tenant)
    outer = _current.get()
    if outer == tenant_id:
        yield tenant_id
        return
    if outer is not None:
        raise TenantScopeError(f"already scoped to tenant {outer}; cannot enter tenant {tenant_id}")
    nested = connection.in_atomic_block
    with transaction.atomic():
        previous = _set(str(tenant_id))
        token = _current.set(tenant_id)
        try:
            yield tenant_id
        finally:
            _current.reset(token)
            if nested and not connection.needs_rollback:
                # Restore, so code after the scope in the enclosing transaction sees nothing
                # again. (An outermost transaction takes its settings with it when it ends.)
                _set(previous)


# -- scope limits -------------------------------------------------------------------------------
# An API key may be limited to a scope prefix. `tenants.services.apikey_authenticate`, which
# every surface that takes a key calls, sets the limit for the request, and
# `surfaces.base.security.ScopeLimitMiddleware` lifts it when the request ends. Three places that
# every surface reaches honour it: the
# tenant-owned manager narrows every ORM query of a model with a `scope` column, recall's SQL
# filters add the same condition, and `facts.inputs.clean_scope` refuses (or fills in) the
# scope of anything written. Scopes are paths: `a:b` covers `a:b` and `a:b/...`, never `a:b2`.

_scope_limit: contextvars.ContextVar[str] = contextvars.ContextVar("scope_limit", default="")


def current_scope_limit() -> str:
    """The scope prefix the current request is limited to ("" for none)."""
    return _scope_limit.get()


def scope_path(prefix: str | None) -> str:
    """A scope path in its one written form (NFC, no outer spaces or slashes; "" for none).
    `tenants.inputs.scope_checked` checks a path from outside and then writes it this way."""
    return unicodedata.normalize("NFC", (prefix or "").strip()).strip("/")


def scope_within(scope: str, prefix: str) -> bool:
    """Whether `scope` lies under the path `prefix`: 'a:b' covers 'a:b/...', never 'a:b2'."""
    prefix = scope_path(prefix)
    return not prefix or scope == prefix or scope.startswith(prefix + "/")


def scope_q(prefix: str | None, field: str = "scope") -> Q:
    """The ORM condition of `scope_within` (an empty Q, i.e. everything, for no prefix)."""
    prefix = scope_path(prefix)
    if not prefix:
        return Q()
    return Q(**{field: prefix}) | Q(**{f"{field}__startswith": f"{prefix}/"})


def scope_sql(prefix: str | None, column: str = "scope") -> tuple[str, list[object]]:
    """The raw-SQL condition of `scope_within`, with its parameters ("TRUE" for no prefix)."""
    prefix = scope_path(prefix)
    if not prefix:
        return "TRUE", []
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"({column} = %s OR {column} LIKE %s)", [prefix, f"{escaped}/%"]


def scopes_q(prefixes: tuple[str, ...], *, exact: bool = False, field: str = "scope") -> Q:
    """Any of the scopes `prefixes` (each with what lies under it, or only itself when `exact`);
    an empty Q, i.e. everything, for none."""
    paths = [scope_path(p) for p in prefixes]
    if exact:
        return Q(**{f"{field}__in": paths}) if paths else Q()
    if not paths or not all(paths):
        return Q()
    condition = Q()
    for path in paths:
        condition |= scope_q(path, field)
    return condition


def scopes_sql(
    prefixes: tuple[str, ...], column: str = "scope", *, exact: bool = False
) -> tuple[str, list[object]]:
    """The raw-SQL condition of `scopes_q`, with its parameters ("TRUE" for none)."""
    paths = [scope_path(p) for p in prefixes]
    if exact:
        return (f"{column} = ANY(%s)", [paths]) if paths else ("TRUE", [])
    if not paths or not all(paths):
        return "TRUE", []
    clauses, params = [], []
    for path in paths:
        clause, values = scope_sql(path, column)
        clauses.append(clause)
        params += values
    return "(" + " OR ".join(clauses) + ")", params


def scope_limit_set(prefix: str) -> contextvars.Token[str]:
    """Limit what follows to `prefix` (until `scope_limit_reset`)."""
    return _scope_limit.set((prefix or "").strip("/"))


def scope_limit_reset(token: contextvars.Token[str] | None = None) -> None:
    if token is not None:
        _scope_limit.reset(token)
    else:
        _scope_limit.set("")
