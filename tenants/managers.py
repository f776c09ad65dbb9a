"""The default manager of every tenant-owned model: no tenant, no query.

`Fact.objects.filter(...)` raises `TenantScopeError` when evaluated; `Fact.objects.for_tenant(t)`
narrows to one tenant (and must run inside `tenant_scope(t)`, where row-level security agrees).
There is no bypass: what spans tenants goes through `tenants.cross_tenant`.
"""

from __future__ import annotations

from typing import Any, Self, TypeVar

from django.db import models

from tenants.scope import TenantRef, TenantScopeError, current_scope_limit, scope_q


def _has_scope(model: type[models.Model]) -> bool:
    try:
        model._meta.get_field("scope")
    except Exception:  # noqa: BLE001 - FieldDoesNotExist: the model has no scope column
        return False
    return True


_M = TypeVar("_M", bound=models.Model)


class TenantQuerySet(models.QuerySet[_M]):
    _tenant_checked = False

    def for_tenant(self, tenant: TenantRef | int) -> Self:
        tenant_id = tenant if isinstance(tenant, int) else tenant.pk
        if not tenant_id:
            raise TenantScopeError(f"for_tenant() needs a saved tenant, got {tenant!r}")
        narrowed = self.filter(tenant_id=tenant_id)
        limit = current_scope_limit()
        if limit and _has_scope(self.model):
            # A key limited to a scope prefix sees only that part of the tenant.
            narrowed = narrowed.filter(scope_q(limit))
        narrowed._tenant_checked = True
        return narrowed

    def _clone(self) -> Self:
        clone = super()._clone()  # type: ignore[misc]  # private, absent from the stubs
        clone._tenant_checked = self._tenant_checked
        return clone

    def _require_tenant(self) -> None:
        if not self._tenant_checked:
            raise TenantScopeError(
                f"{self.model.__name__} is tenant data: query it with "
                f"{self.model.__name__}.objects.for_tenant(tenant)"
            )

    # Every way a queryset reaches the database goes through one of these.
    def _fetch_all(self) -> None:
        if self._result_cache is None:
            self._require_tenant()
        super()._fetch_all()

    def iterator(self, *args: Any, **kwargs: Any) -> Any:
        self._require_tenant()
        return super().iterator(*args, **kwargs)

    def count(self) -> int:
        self._require_tenant()
        return super().count()

    def exists(self) -> bool:
        self._require_tenant()
        return super().exists()

    def aggregate(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        self._require_tenant()
        return super().aggregate(*args, **kwargs)

    def update(self, **kwargs: Any) -> int:
        self._require_tenant()
        return super().update(**kwargs)

    def delete(self) -> tuple[int, dict[str, int]]:
        self._require_tenant()
        return super().delete()

    def explain(self, *args: Any, **kwargs: Any) -> str:
        self._require_tenant()
        return super().explain(*args, **kwargs)


class TenantManager(models.Manager[_M]):
    """Hands out `TenantQuerySet`s; `for_tenant` is the one way in."""

    def get_queryset(self) -> TenantQuerySet[_M]:
        return TenantQuerySet(self.model, using=self._db)

    def for_tenant(self, tenant: TenantRef | int) -> TenantQuerySet[_M]:
        return self.get_queryset().for_tenant(tenant)
