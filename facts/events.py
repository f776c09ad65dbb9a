"""The audit log's one writer: every change to a fact leaves a `FactEvent`."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from facts.models import FactEvent
from tenants.actors import Actor
from tenants.models import Tenant


def fact_event_record(
    tenant: Tenant,
    fact_id: int | None,
    action: str,
    actor: Actor,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
) -> None:
    """Append one event to the tenant's audit log."""
    FactEvent.objects.create(
        tenant=tenant,
        fact_id=fact_id,
        action=action,
        actor=str(actor),
        before=before,
        after=after,
        at=timezone.now(),
    )


def fact_events_record(
    tenant: Tenant,
    rows: list[tuple[int, dict[str, Any]]],
    action: str,
    actor: Actor,
) -> None:
    """Append one event per (fact id, state after) to the tenant's audit log, in one insert."""
    at = timezone.now()
    events = [
        FactEvent(tenant=tenant, fact_id=fact_id, action=action, actor=str(actor), after=after,
                  at=at)
        for fact_id, after in rows
    ]  # fmt: skip
    FactEvent.objects.bulk_create(events, batch_size=1000)
