"""Reads of conflicts: one conflict, and pages of them (newest first)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q, QuerySet

from facts.inputs import MAX_ID
from facts.models import Conflict, ConflictStatus
from tenants.errors import NotFound
from tenants.models import Tenant
from tenants.scope import tenant_scope
from tenants.validation import check_choice


@dataclass(frozen=True)
class ConflictPage:
    conflicts: list[Conflict]
    next_cursor: int | None


def _conflicts(tenant: Tenant) -> QuerySet[Conflict]:
    return Conflict.objects.for_tenant(tenant).select_related("fact_a", "fact_b")


def conflict_list(
    *, tenant: Tenant, status: str | None = ConflictStatus.OPEN, fact_id: int | None = None,
    limit: int = 50, cursor: int | None = None,
) -> ConflictPage:  # fmt: skip
    """Conflicts, newest first; `status` None for all. `cursor`: the id a page ended before."""
    check_choice("status", status, ConflictStatus.values)
    with tenant_scope(tenant):
        rows = _conflicts(tenant)
        if status is not None:
            rows = rows.filter(status=status)
        if fact_id is not None:
            rows = rows.filter(Q(fact_a_id=fact_id) | Q(fact_b_id=fact_id))
        if cursor is not None:
            rows = rows.filter(pk__lt=cursor)
        page = list(rows.order_by("-pk")[: limit + 1])
    more = len(page) > limit
    page = page[:limit]
    return ConflictPage(conflicts=page, next_cursor=page[-1].pk if more and page else None)


def conflict_get(*, tenant: Tenant, conflict_id: int) -> Conflict:
    conflict = None
    if 0 < conflict_id <= MAX_ID:
        with tenant_scope(tenant):
            conflict = _conflicts(tenant).filter(pk=conflict_id).first()
    if conflict is None:
        raise NotFound("conflict", conflict_id)
    return conflict
