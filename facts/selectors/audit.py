"""Reads of the audit log.

Two append-only tables make the audit log: FactEvent (what happened to facts) and TenantEvent
(settings, members, keys, retention). One list shows both, newest first.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Q

from facts.models import EventAction, FactEvent
from facts.selectors.paging import (
    MAX_PAGE,
    cursor_decode,
    cursor_encode,
    cursor_id,
    cursor_invalid,
    cursor_moment,
    page_limit,
)
from tenants.models import Tenant, TenantAction, TenantEvent
from tenants.scope import tenant_scope
from tenants.validation import check_choice

AUDIT_SOURCES = ("fact", "tenant")
# Sort rank within one instant, so the order (at, source, id) is total and a cursor is exact.
_SOURCE_RANK = {"fact": 1, "tenant": 0}


@dataclass(frozen=True)
class AuditEvent:
    source: str
    id: int
    action: str
    actor: str
    fact_id: int | None
    target: str
    before: Any
    after: Any
    at: datetime

    @property
    def key(self) -> tuple[datetime, int, int]:
        return (self.at, _SOURCE_RANK[self.source], self.id)


@dataclass(frozen=True)
class AuditEventList:
    """One page of `audit_event_list`, and the cursor of the next (None on the last)."""

    events: list[AuditEvent]
    next_cursor: str | None


def audit_actions() -> list[str]:
    return [*EventAction.values, *TenantAction.values]


def _keyset(source: str, after: tuple[datetime, int, int] | None) -> Q:
    """Rows strictly after the cursor in the order (at, source rank, id), descending."""
    if after is None:
        return Q()
    at, rank, ident = after
    mine = _SOURCE_RANK[source]
    if mine < rank:
        return Q(at__lte=at)
    if mine > rank:
        return Q(at__lt=at)
    return Q(at__lt=at) | Q(at=at, pk__lt=ident)


def _after(cursor: str) -> tuple[datetime, int, int]:
    stamp, rank, ident = cursor_decode(cursor, (str, int, int))
    if rank not in _SOURCE_RANK.values():
        raise cursor_invalid()
    return (cursor_moment(stamp), rank, cursor_id(ident))


def audit_event_list(
    *,
    tenant: Tenant,
    source: str | None = None,
    action: str | None = None,
    actor: str | None = None,
    fact_id: int | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int = 50,
    cursor: str | None = None,
) -> AuditEventList:
    """The tenant's audit events, newest first, filtered; keyset pages over both tables.

    `actor` matches exactly or as a prefix of whole parts: `apikey:7` matches `apikey:7:hermes`.
    `fact_id` keeps only that fact's events (also after it was purged).
    """
    limit = page_limit(limit)
    check_choice("source", source, list(AUDIT_SOURCES))
    check_choice("action", action, audit_actions())
    after = _after(cursor) if cursor else None
    common = Q()
    if action:
        common &= Q(action=action)
    if actor:
        common &= Q(actor=actor) | Q(actor__startswith=f"{actor}:")
    if since is not None:
        common &= Q(at__gte=since)
    if until is not None:
        common &= Q(at__lt=until)
    sources = [source] if source else list(AUDIT_SOURCES)
    if fact_id is not None:
        sources = [s for s in sources if s == "fact"]
    events: list[AuditEvent] = []
    with tenant_scope(tenant):
        if "fact" in sources:
            rows = FactEvent.objects.for_tenant(tenant).filter(common & _keyset("fact", after))
            if fact_id is not None:
                rows = rows.filter(fact_id=fact_id)
            events += [
                AuditEvent("fact", e.pk, e.action, e.actor, e.fact_id, "", e.before, e.after, e.at)
                for e in rows.order_by("-at", "-id")[: limit + 1]
            ]
        if "tenant" in sources:
            tenant_rows = TenantEvent.objects.for_tenant(tenant).filter(
                common & _keyset("tenant", after)
            )
            events += [
                AuditEvent(
                    "tenant", e.pk, e.action, e.actor, None, e.target, e.before, e.after, e.at
                )
                for e in tenant_rows.order_by("-at", "-id")[: limit + 1]
            ]
    events.sort(key=lambda e: e.key, reverse=True)
    more = len(events) > limit
    events = events[:limit]
    last = events[-1] if events else None
    next_cursor = None
    if more and last is not None:
        next_cursor = cursor_encode(last.at.isoformat(), _SOURCE_RANK[last.source], last.id)
    return AuditEventList(events=events, next_cursor=next_cursor)


def audit_event_iter(
    *, tenant: Tenant, page_size: int = MAX_PAGE, **filters: Any
) -> Iterator[AuditEvent]:
    """Every matching event, newest first, a page (one short transaction) at a time."""
    cursor = None
    while True:
        page = audit_event_list(tenant=tenant, limit=page_size, cursor=cursor, **filters)
        yield from page.events
        if page.next_cursor is None:
            return
        cursor = page.next_cursor
