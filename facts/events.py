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
